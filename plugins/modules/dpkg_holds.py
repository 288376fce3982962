#!/usr/bin/python
"""Set the dpkg selection of many packages in one call (ansible.builtin.dpkg_selections takes one)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: dpkg_holds
short_description: Hold or release many Debian packages in one call
description:
  - Reads the dpkg selections of O(names) once (one C(dpkg-query)) and writes only those that differ from O(selection),
    in one C(dpkg --set-selections). The roles hold every ROCm and driver package this way instead of one
    M(ansible.builtin.dpkg_selections) call per package.
  - With O(selection=install) only held packages change (a removed package's deinstall stays).
  - Packages that dpkg does not know (not installed, or only about to be installed in check mode) are
    left alone and listed in RV(unknown).
version_added: "0.1.0"
options:
  names:
    description: Package names.
    type: list
    elements: str
    required: true
  selection:
    description: The selection to set.
    type: str
    choices: [hold, install]
    required: true
author: rocm-fleet
"""

EXAMPLES = r"""
- name: Hold ROCm packages so that no upgrade moves them
  rocm_fleet.fleet.dpkg_holds:
    names: [rocm-hip-runtime, rocminfo]
    selection: hold
"""

RETURN = r"""
changed_packages:
  description: The packages whose selection was (or in check mode would be) set.
  type: list
  elements: str
  returned: always
unknown:
  description: The packages dpkg does not know, left alone.
  type: list
  elements: str
  returned: always
installed:
  description:
    - Each of O(names) that is installed, to its version (read in the same C(dpkg-query); a selection
      change does not change a version). The rocm role checks the declared versions with it instead of
      a M(ansible.builtin.package_facts) run.
  type: dict
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule

# One dpkg-query for the selection (the first word of Status, "want") and the installed version.
QUERY_FORMAT = "${Package}\t${Status}\t${Version}\n"


def current_state(module: AnsibleModule, names: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """({name: selection}, {name: installed version}) of the packages dpkg knows among names.

    `dpkg-query -W -f FORMAT NAME...` prints one line per known package (per architecture when several
    are installed) and "no packages found matching NAME" on stderr for each unknown one, then exits 1.
    """
    rc, out, err = module.run_command(["dpkg-query", "-W", "-f", QUERY_FORMAT, *names])
    if rc not in (0, 1):
        module.fail_json(msg=f"dpkg-query failed (exit {rc}): {err.strip()}")
    selections, installed = {}, {}
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) != 3 or len(parts[1].split()) != 3:
            continue
        name, (want, _flag, status), version = parts[0], parts[1].split(), parts[2]
        if want == "unknown":
            continue
        selections.setdefault(name, want)
        if status == "installed":
            installed.setdefault(name, version)
    return selections, installed


def main() -> None:
    module = AnsibleModule(
        argument_spec={"names": {"type": "list", "elements": "str", "required": True},
                       "selection": {"type": "str", "choices": ["hold", "install"], "required": True}},
        supports_check_mode=True,
    )
    names = list(dict.fromkeys(module.params["names"]))
    wanted = module.params["selection"]
    now, installed = current_state(module, names) if names else ({}, {})
    unknown = [n for n in names if n not in now]
    # Releasing touches held packages only: a package removed by hand (deinstall, purge) must not be
    # marked for installation again.
    changing = [n for n in names if n in now and now[n] != wanted and (wanted == "hold" or now[n] == "hold")]
    if changing and not module.check_mode:
        # run_command ends data with the one newline it needs
        module.run_command(["dpkg", "--set-selections"], data="\n".join(f"{n} {wanted}" for n in changing),
                           check_rc=True)
    module.exit_json(changed=bool(changing), changed_packages=changing, unknown=unknown, installed=installed,
                     diff={"before": "".join(f"{n} {now[n]}\n" for n in changing),
                           "after": "".join(f"{n} {wanted}\n" for n in changing)})


if __name__ == "__main__":
    main()
