#!/usr/bin/python
"""Documentation of the action plugin rocm_fleet.fleet.fleet_report (plugins/action/fleet_report.py);
it runs no module."""

from __future__ import annotations

DOCUMENTATION = r"""
module: fleet_report
short_description: Aggregate one run's per-node results into the fleet report, on the controller
description:
  - Runs C(rocm-fleet report) over O(results) inside Ansible's process (validation/commands/report.py), reading
    the documents one after another; writes fleet.md, fleet.html, fleet-junit.xml and fleet.prom there.
  - Fails when any node failed, did not finish, delivered nothing or was unreachable; RV(stdout) is the
    summary either way, and RV(rc) the command's exit code (1 a failure, 2 no verdict possible).
  - Contacts no host.
version_added: "0.1.0"
options:
  results:
    description: The run's results directory on the controller, one C(<node>.json) per node.
    type: path
    required: true
  expect:
    description: The nodes that were targeted; one without a results document is a named failure.
    type: list
    elements: str
    default: []
  unreachable:
    description: The nodes that stopped answering during the run (reported as unreachable).
    type: list
    elements: str
    default: []
  reasons:
    description:
      - What the run saw of a node that delivered no results document (the step that failed and its message),
        by node; said with that node's failure in every report format. Ignored for nodes that delivered one.
    type: dict
    default: {}
author: rocm-fleet
"""

EXAMPLES = r"""
- name: Write the fleet report
  rocm_fleet.fleet.fleet_report:
    results: "{{ playbook_dir }}/../results/{{ rocm_fleet_run_id }}"
    expect: "{{ ansible_play_hosts_all }}"
  delegate_to: localhost
  run_once: true
  register: __fleet_report
"""

RETURN = r"""
rc:
  description: The exit code of C(rocm-fleet report) (0 every node passed, 1 a failure, 2 no verdict possible).
  type: int
  returned: always
stdout:
  description: The fleet summary, as the command prints it.
  type: str
  returned: always
stdout_lines:
  description: RV(stdout), line by line.
  type: list
  elements: str
  returned: always
stderr:
  description: What the command said on its error stream (its one line when no verdict was possible).
  type: str
  returned: always
"""
