#!/bin/sh
# Run "$@" in a private mount namespace whose /dev also holds an empty /dev/kfd, so the suite's
# native probes (which run only where /dev/kfd exists) run on a machine without an AMD GPU. The
# machine's own /dev is untouched: /dev is a fresh tmpfs inside the namespace with the few device
# nodes a process needs bound into it. Needs root (CI runs as root).
set -eu
exec unshare --mount --propagation private sh -c '
  set -eu
  d=$(mktemp -d)
  mount -t tmpfs tmpfs "$d"
  for n in null zero random urandom full tty; do
    if [ -e "/dev/$n" ]; then touch "$d/$n"; mount --bind "/dev/$n" "$d/$n"; fi
  done
  ln -s /proc/self/fd "$d/fd"; ln -s /proc/self/fd/0 "$d/stdin"; ln -s /proc/self/fd/1 "$d/stdout"
  ln -s /proc/self/fd/2 "$d/stderr"
  mkdir "$d/pts" "$d/shm"
  mount --rbind /dev/pts "$d/pts"; mount --bind /dev/shm "$d/shm"
  touch "$d/kfd"
  mount --rbind "$d" /dev
  exec "$@"' fake-kfd "$@"
