"""A fake `ssh` for unit tests of runs over ssh:// and ansible:// hosts (no SSH server exists in a unit
test): put FAKE_SSH first on PATH as `ssh`. The remote command runs on this machine after
FAKE_SSH_DELAY seconds (the round trip and the command's own time); each command's host, start
and end go to FAKE_SSH_LOG; hosts in FAKE_SSH_DOWN refuse connections (exit 255), hosts in
FAKE_SSH_HANG never answer."""

FAKE_SSH = """#!/bin/sh
# fake ssh (tests/helpers/fake_ssh.py): the remote command runs here, after a delay
for cmd; do :; done
i=0; for a; do i=$((i+1)); [ $i -eq $(($# - 1)) ] && host=$a; done
case " $FAKE_SSH_DOWN " in *" $host "*)
  echo "ssh: connect to host $host port 22: Connection refused" >&2; exit 255;; esac
case " $FAKE_SSH_HANG " in *" $host "*) sleep 3600;; esac
start=$(date +%s.%N)
sleep "$FAKE_SSH_DELAY"
sh -c "$cmd"; rc=$?
echo "$host $start $(date +%s.%N)" >> "$FAKE_SSH_LOG"
exit $rc
"""
