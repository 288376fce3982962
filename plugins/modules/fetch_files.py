#!/usr/bin/python
"""Documentation of the action plugin rocm_fleet.fleet.fetch_files (plugins/action/fetch_files.py); it runs
rocm_fleet.fleet.read_paths on the node, once."""

from __future__ import annotations

DOCUMENTATION = r"""
module: fetch_files
short_description: Copy several files from a node to the controller with one module run
description:
  - Copies every O(files[].src) through the connection's own file transfer (sftp or scp over the host's
    SSH connection), which runs no module; where that fails for any of them (the login user may not read
    it), reads them all with one run of P(rocm_fleet.fleet.read_paths#module) as the task's become user,
    as P(ansible.builtin.fetch#module) reads through slurp.
  - Writes each to its O(files[].dest) on the controller atomically, mode 0644, creating missing directories.
  - Checks each source's size and type on the node before transferring any (one C(stat) through the
    connection's shell, as the task's become user; no module run) and fails, transferring and writing
    nothing, naming the file and its size, when one is larger than O(max_bytes) or is not a regular file.
  - Fails, writing nothing, when any source is missing or unreadable, or grew past O(max_bytes) while it came.
  - Always reports changed. Skipped in check mode, as P(ansible.builtin.fetch#module) is.
version_added: "0.1.0"
options:
  files:
    description: The files to copy.
    type: list
    elements: dict
    required: true
    suboptions:
      src:
        description: Absolute path on the node.
        type: str
        required: true
      dest:
        description:
          - Path on the controller; a relative one is taken from the playbook's directory, as
            P(ansible.builtin.fetch#module) does.
        type: path
        required: true
  max_bytes:
    description:
      - Refuse a source larger than this many bytes, on the node, before it is transferred. The default,
        256 MiB, is far above a results document (tens of kB to a few MB) and a support bundle (a few MB).
    type: int
    default: 268435456
author: rocm-fleet
"""

EXAMPLES = r"""
- name: Fetch the node's results
  rocm_fleet.fleet.fetch_files:
    files:
      - src: /var/lib/rocm-fleet/results/RUN/node1.json
        dest: results/RUN/node1.json
      - src: /var/lib/rocm-fleet/results/RUN/junit.xml
        dest: results/RUN/junit-node1.xml

- name: Fetch a support bundle, refused on the node past 64 MiB
  rocm_fleet.fleet.fetch_files:
    files:
      - src: /var/lib/rocm-fleet/bundles/rocm-fleet-bundle-node1-20261206T120000Z.tar.gz
        dest: remediate/bundles/node1.tar.gz
    max_bytes: 67108864
"""

RETURN = r"""
dest:
  description: The files written on the controller, in the order given.
  type: list
  elements: str
  returned: success
module_run:
  description: Whether they came through P(rocm_fleet.fleet.read_paths#module) rather than the connection's transfer.
  type: bool
  returned: success
"""
