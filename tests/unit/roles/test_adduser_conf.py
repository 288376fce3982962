"""gpu_access's adduser.conf rule (validation/adduser.py): one write with the same result as the four
ansible.builtin.lineinfile tasks it replaced, and the reading the check uses.

The equivalence test runs those four lineinfile tasks (as they stood in roles/gpu_access/tasks/adduser.yml
before this rule) through ansible on copies of each file, so a difference in placement or in what is
removed shows up here rather than on a node.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from validation import adduser

ROOT = Path(__file__).resolve().parents[3]
DEBIAN = (ROOT / "tests/fixtures/real/adduser-conf/debian-12-adduser-3.134-adduser.conf").read_text()
GROUPS = ["video", "render"]
# AMD's ROCm install guide appends these three lines (two EXTRA_GROUPS lines: adduser keeps the last).
AMD_GUIDE = DEBIAN + "ADD_EXTRA_GROUPS=1\nEXTRA_GROUPS=video\nEXTRA_GROUPS=render\n"
INPUTS = {
    "debian-default": DEBIAN,
    "amd-guide": AMD_GUIDE,
    "indented-and-zero": "  EXTRA_GROUPS=\"users\"\n# keep me\nADD_EXTRA_GROUPS=0\n",
    "no-final-newline": "# only a comment",
    "empty": "",
}

LINEINFILE_TASKS = """
- hosts: localhost
  gather_facts: false
  vars:
    groups_line: "{{ groups_wanted | join(' ') }}"
  tasks:
    - ansible.builtin.lineinfile:
        path: "{{ item }}"
        regexp: '^\\s*EXTRA_GROUPS='
        line: EXTRA_GROUPS="{{ groups_line }}"
        insertafter: '^#\\s*EXTRA_GROUPS='
      loop: "{{ files }}"
    - ansible.builtin.lineinfile:
        path: "{{ item }}"
        regexp: '^\\s*EXTRA_GROUPS=(?!"{{ groups_line | regex_escape }}"$)'
        state: absent
      loop: "{{ files }}"
    - ansible.builtin.lineinfile:
        path: "{{ item }}"
        regexp: '^\\s*ADD_EXTRA_GROUPS='
        line: ADD_EXTRA_GROUPS=1
        insertafter: '^#\\s*ADD_EXTRA_GROUPS='
      loop: "{{ files }}"
    - ansible.builtin.lineinfile:
        path: "{{ item }}"
        regexp: '^\\s*ADD_EXTRA_GROUPS=(?!1$)'
        state: absent
      loop: "{{ files }}"
"""


def test_the_debian_default_gets_both_lines_after_their_commented_examples() -> None:
    new = adduser.with_settings(DEBIAN, GROUPS)
    added = [line for line in new.splitlines() if line not in DEBIAN.splitlines()]
    assert added == ['EXTRA_GROUPS="video render"', "ADD_EXTRA_GROUPS=1"]
    lines = new.splitlines()
    assert lines[lines.index('EXTRA_GROUPS="video render"') - 1] == '#EXTRA_GROUPS="users"'
    assert lines[lines.index("ADD_EXTRA_GROUPS=1") - 1] == "#ADD_EXTRA_GROUPS=0"
    assert adduser.with_settings(new, GROUPS) == new


def test_amds_two_lines_become_one_and_the_check_reads_the_settings() -> None:
    new = adduser.with_settings(AMD_GUIDE, GROUPS)
    assert {name: adduser.assignments(new, name) for name in adduser.settings(GROUPS)} == {
        "EXTRA_GROUPS": ['"video render"'], "ADD_EXTRA_GROUPS": ["1"]}
    assert adduser.assignments(AMD_GUIDE, "EXTRA_GROUPS") == ["video", "render"]


def test_the_result_equals_what_the_four_lineinfile_tasks_wrote(tmp_path: Path) -> None:
    copies = []
    for name, text in INPUTS.items():
        (tmp_path / name).write_text(text)
        copies.append(str(tmp_path / name))
    playbook = tmp_path / "lineinfile.yml"
    playbook.write_text(LINEINFILE_TASKS)
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-c", "local", "-i", "localhost,",
         "-e", json.dumps({"files": copies, "groups_wanted": GROUPS,
                           "ansible_python_interpreter": sys.executable}), str(playbook)],
        cwd=ROOT, env={**os.environ, "ANSIBLE_NOCOLOR": "1"}, capture_output=True, text=True,
        timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    for name, text in INPUTS.items():
        assert adduser.with_settings(text, GROUPS) == (tmp_path / name).read_text(), name


@pytest.mark.parametrize("groups", [["video"], ["video", "render", "rfextra"]])
def test_a_changed_group_list_rewrites_the_line_in_place(groups: list[str]) -> None:
    first = adduser.with_settings(DEBIAN, GROUPS)
    second = adduser.with_settings(first, groups)
    assert len(second.splitlines()) == len(first.splitlines())
    assert adduser.assignments(second, "EXTRA_GROUPS") == [f'"{" ".join(groups)}"']
