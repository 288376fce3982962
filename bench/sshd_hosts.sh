#!/usr/bin/env bash
# N OpenSSH servers on 127.0.0.1 that stand for N hosts on a machine without the lab (the lent GPU
# machine: 16 cores, no podman, no network), for bench/hosts_side_by_side.py. Each host is this machine
# over real SSH; the group is `lab`.
#   bash bench/sshd_hosts.sh N PORT_BASE DIR [SSHD_ROOT]
# writes DIR/inventory.yml and DIR/key; stop them with: kill $(cat DIR/sshd-*.pid)
# A session on a host gets the PATH the servers were started with (`python3` there is the one of the shell
# that started them; sshd's default PATH may miss it).
# Uses the machine's sshd, ssh and ssh-keygen, else those unpacked from Debian packages under SSHD_ROOT
# (dpkg -x of openssh-server, openssh-sftp-server, openssh-client, with the libraries they link but glibc
# copied into SSHD_ROOT/lib), run through wrappers in DIR/bin that find those libraries first: put DIR/bin
# first on PATH for the runs that use the hosts.
# PRIVATE_DIRS="DIR ..." gives each host its own empty copy of those directories (each sshd in its own
# mount namespace, a tmpfs on each), so a playbook that installs into them (validate.yml: /opt/rocm-fleet,
# /etc/rocm-fleet, /var/lib/rocm-fleet) sees four nodes, not one machine four times. Needs root.
set -euo pipefail
n=$1 base=$2 dir=$3 root=${4:+$(cd "$4" && pwd)}   # absolute: sshd re-executes itself by its own path
mkdir -p "$dir/bin" /run/sshd
chmod 700 "$dir"
tool() {   # NAME PATH-UNDER-ROOT: the machine's NAME, else a wrapper in DIR/bin around the unpacked one
  if command -v "$1" > /dev/null && [ "$(command -v "$1")" != "$dir/bin/$1" ]; then command -v "$1"; return; fi
  [ -n "$root" ] && [ -x "$root/$2" ] || { echo "sshd_hosts: no $1 on this machine and none under '$root'" >&2; exit 3; }
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/lib:%s/usr/lib/x86_64-linux-gnu exec %s/%s "$@"\n' "$root" "$root" "$root" "$2" \
    > "$dir/bin/$1"
  chmod 755 "$dir/bin/$1"
  echo "$dir/bin/$1"
}
sshd=$(tool sshd usr/sbin/sshd)
ssh=$(tool ssh usr/bin/ssh)
keygen=$(tool ssh-keygen usr/bin/ssh-keygen)
tool sftp usr/bin/sftp > /dev/null   # ansible finds it on PATH (DIR/bin first)
sftp=$(ls /usr/lib/openssh/sftp-server /usr/libexec/openssh/sftp-server 2>/dev/null | head -1 || true)
[ -n "$sftp" ] || sftp=$(tool sftp-server usr/lib/openssh/sftp-server)
id sshd > /dev/null 2>&1 || useradd --system --home-dir /run/sshd --shell /usr/sbin/nologin sshd
rm -f "$dir/key" "$dir/key.pub" "$dir/hostkey" "$dir/hostkey.pub"
"$keygen" -q -t ed25519 -N '' -C rf-bench -f "$dir/key"
"$keygen" -q -t ed25519 -N '' -C rf-bench-host -f "$dir/hostkey"
cp "$dir/key.pub" "$dir/authorized_keys"
{
  printf 'all:\n  children:\n    lab:\n      hosts:\n'
  for i in $(seq 1 "$n"); do
    port=$((base + i))
    private=()
    if [ -n "${PRIVATE_DIRS:-}" ]; then
      # shellcheck disable=SC2016  # expanded by the namespace's own shell
      private=(unshare --mount --propagation private sh -c \
        'for d in $PRIVATE_DIRS; do mkdir -p "$d" && mount -t tmpfs -o mode=0755 "rf-host" "$d" || exit 1; done; exec "$@"' sh)
    fi
    "${private[@]}" "$sshd" -f /dev/null -o Port=$port -o ListenAddress=127.0.0.1 -o HostKey="$dir/hostkey" \
      -o AuthorizedKeysFile="$dir/authorized_keys" -o PermitRootLogin=prohibit-password -o StrictModes=no \
      -o UsePAM=no -o PidFile="$dir/sshd-$i.pid" -o Subsystem="sftp $sftp" -o MaxSessions=100 \
      -o MaxStartups=100 -o "SetEnv=PATH=$PATH"
    printf '        host%s: {ansible_host: 127.0.0.1, ansible_port: %s}\n' "$i" "$port"
  done
  printf '      vars:\n        ansible_user: root\n        ansible_ssh_private_key_file: %s/key\n' "$dir"
  printf "        ansible_ssh_common_args: '-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'\n"
  # sftp runs the ssh it was built with (/usr/bin/ssh) unless told: name the one found above
  printf "        ansible_sftp_extra_args: '-S %s'\n" "$ssh"
} > "$dir/inventory.yml"
for i in $(seq 1 "$n"); do
  "$ssh" -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=error \
    -i "$dir/key" -p $((base + i)) root@127.0.0.1 true
done
echo "sshd_hosts: $n hosts on 127.0.0.1:$((base + 1))-$((base + n)) ($sshd, $ssh), inventory $dir/inventory.yml"
