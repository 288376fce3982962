#!/bin/sh
# The lab's GPU node: makes a lab host (a container without a GPU) look, to the suite, like a healthy node
# with 8 MI300X, so that the checks which read the GPUs (presence, identity, firmware, topology, RAS)
# run on the lab and the RAS faults can be injected with the amd-smi stand-in. Run at every boot by
# rocm-fleet-standin-gpu-node.service (installed by tests/integration/test_remediate.py); a lab host's
# reboot starts a fresh mount namespace, so this runs again after each one.
#
# What it changes, in the host's own mount namespace only (never the machine's):
#   /sys/module            a tmpfs holding amdgpu/version: "amdgpu is loaded"
#   /sys/bus/pci/devices   a tmpfs with the 8 GPUs' class, vendor, device and numa_node files, at the BDFs
#                          of the real 8 x MI300X topology output the amd-smi stand-in prints
#   /dev/kfd, /dev/dri/renderD128..135
#                          plain files with the group and mode of the gpu_access role's udev rule, applied
#                          here because no udev runs in a lab container (as test_health.py does for one node)
# The tools (amd-smi, rocminfo, lspci) are stand-ins in /usr/local/bin; see their own files.
# Refuses to run anywhere but on a lab host (/etc/rocm-fleet-lab) unless ROCM_FLEET_STANDIN_ANYWHERE=1
# (a test's private mount namespace).
set -eu
if [ ! -e /etc/rocm-fleet-lab ] && [ "${ROCM_FLEET_STANDIN_ANYWHERE:-0}" != 1 ]; then
  echo "gpu_node/setup.sh: not a lab host (/etc/rocm-fleet-lab is missing); refusing to change /sys and /dev" >&2
  exit 2
fi
BDFS="0000:0c:00.0 0000:22:00.0 0000:38:00.0 0000:5c:00.0 0000:9f:00.0 0000:af:00.0 0000:bf:00.0 0000:df:00.0"
RULE=/etc/udev/rules.d/70-rocm-fleet-gpu.rules

mountpoint -q /sys/module || mount -t tmpfs -o mode=0755 rocm-fleet-standin /sys/module
mkdir -p /sys/module/amdgpu && echo "6.8.5" > /sys/module/amdgpu/version

mountpoint -q /sys/bus/pci/devices || mount -t tmpfs -o mode=0755 rocm-fleet-standin /sys/bus/pci/devices
numa=0
for bdf in $BDFS; do
  d=/sys/bus/pci/devices/$bdf
  mkdir -p "$d"
  echo 0x120000 > "$d/class"; echo 0x1002 > "$d/vendor"; echo 0x74a1 > "$d/device"
  echo $((numa / 4)) > "$d/numa_node"
  numa=$((numa + 1))
done

group=root mode=0666
if [ -r "$RULE" ]; then
  group=$(sed -n 's/.*KERNEL=="kfd".*GROUP:\{0,1\}="\([^"]*\)".*/\1/p' "$RULE" | head -n 1)
  mode=$(sed -n 's/.*KERNEL=="kfd".*MODE:\{0,1\}="\([0-7]*\)".*/\1/p' "$RULE" | head -n 1)
fi
mkdir -p /dev/dri
for node in /dev/kfd /dev/dri/renderD128 /dev/dri/renderD129 /dev/dri/renderD130 /dev/dri/renderD131 \
            /dev/dri/renderD132 /dev/dri/renderD133 /dev/dri/renderD134 /dev/dri/renderD135; do
  [ -e "$node" ] || : > "$node"
  chgrp "${group:-root}" "$node"; chmod "${mode:-0666}" "$node"
done
