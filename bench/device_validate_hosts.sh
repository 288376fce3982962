#!/usr/bin/env bash
# playbooks/validate.yml on one host and on four where every host has its own cores (issue 20: 4 hosts
# <= 1.3x one host). The lab's two cores cannot show it: there the four hosts' own runs share the
# controller's cores. On the lent GPU machine (16 cores, no podman, no network) each host is an OpenSSH
# server in its own mount namespace, with its own empty /opt/rocm-fleet, /etc/rocm-fleet and
# /var/lib/rocm-fleet (bench/sshd_hosts.sh, PRIVATE_DIRS): the playbook installs the suite on each, writes
# each one's declared state, runs each one's smoke tier (no GPU checks) and fetches each one's results,
# over real SSH, the controller being this machine too. Then bench/validate_bench.py, interleaved.
#   bash bench/device_validate_hosts.sh REPEATS      (repository root; JSON and log in $OUT)
# Carried (git-ignored): .whl-ssh (ansible-core and what it needs), .whl (pytest-testinfra), .whl-node
# (jsonschema and what it needs, for the nodes' Python; setuptools, for the wheelhouse's offline build),
# .sshd-root (Debian's OpenSSH, bench/sshd_hosts.sh).
# The machine was never provisioned, so the nodes' host-configuration checks fail (exit 2 from the
# playbook, every node's document delivered): the bench times the whole run either way.
set -euo pipefail
repeats=${1:-3}
export LC_ALL=C.UTF-8 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/rf-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl-ssh/*.whl .whl/*.whl
# the checkout as the collection rocm_fleet.fleet (a link in git; made again where the copy lost it)
link=collections/ansible_collections/rocm_fleet/fleet
[ -e "$link/ansible.cfg" ] || { rm -rf "$link" && ln -s ../../.. "$link"; }
# the nodes' venvs see the system's packages (--system-site-packages): jsonschema is the one it lacks
python3 -m pip install -q --no-index --no-deps --break-system-packages .whl-node/jsonschema*.whl \
  .whl-node/referencing*.whl .whl-node/rpds_py*.whl
export PYTHONPATH=$PWD:/tmp/site PATH=/tmp/rf-hosts/bin:/tmp/site/bin:$PATH
# validation/wheelhouse.py builds with pip: from these wheels, not an index
export PIP_NO_INDEX=1 PIP_FIND_LINKS="$PWD/.whl $PWD/.whl-node"
PRIVATE_DIRS="/opt/rocm-fleet /etc/rocm-fleet /var/lib/rocm-fleet" \
  bash bench/sshd_hosts.sh 4 2220 /tmp/rf-hosts .sshd-root
python=$(readlink -f "$(command -v python3)")
nproc > "$OUT/nproc.txt"
python3 -m bench.validate_bench -i /tmp/rf-hosts/inventory.yml --hosts lab --repeats "$repeats" \
  -e rocm_fleet_hosts=lab -e validation_node_no_gpu=true -e '{"validation_node_system_packages": []}' \
  -e "ansible_python_interpreter=$python" --json "$OUT/validate-hosts-16core.json" 2>&1 | tee "$OUT/validate-hosts-16core.log"
kill "$(cat /tmp/rf-hosts/sshd-1.pid)" "$(cat /tmp/rf-hosts/sshd-2.pid)" "$(cat /tmp/rf-hosts/sshd-3.pid)" \
  "$(cat /tmp/rf-hosts/sshd-4.pid)" 2> /dev/null || true
