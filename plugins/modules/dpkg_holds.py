#!/usr/bin/python
"""Set the dpkg selection of many packages in one call (ansible.builtin.dpkg_selections takes one)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: dpkg_holds
short_description: Hold or release many Debian packages in one call
description:
  - Reads the dpkg selections of O(names) once and writes only those that differ from O(selection),
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
"""

from ansible.module_utils.basic import AnsibleModule


def current_selections(module: AnsibleModule, names: list[str]) -> dict[str, str]:
    # `dpkg --get-selections NAME...` prints "name[:arch]<tabs>selection" for the known ones and a
    # "no packages found matching" line on stderr for each unknown one (exit 0 either way).
    _rc, out, _err = module.run_command(["dpkg", "--get-selections", *names], check_rc=True)
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2:
            found[parts[0]] = parts[1]
            found.setdefault(parts[0].split(":", 1)[0], parts[1])
    return found


def main() -> None:
    module = AnsibleModule(
        argument_spec={"names": {"type": "list", "elements": "str", "required": True},
                       "selection": {"type": "str", "choices": ["hold", "install"], "required": True}},
        supports_check_mode=True,
    )
    names = list(dict.fromkeys(module.params["names"]))
    wanted = module.params["selection"]
    now = current_selections(module, names) if names else {}
    unknown = [n for n in names if n not in now]
    # Releasing touches held packages only: a package removed by hand (deinstall, purge) must not be
    # marked for installation again.
    changing = [n for n in names if n in now and now[n] != wanted and (wanted == "hold" or now[n] == "hold")]
    if changing and not module.check_mode:
        # run_command ends data with the one newline it needs
        module.run_command(["dpkg", "--set-selections"], data="\n".join(f"{n} {wanted}" for n in changing),
                           check_rc=True)
    module.exit_json(changed=bool(changing), changed_packages=changing, unknown=unknown,
                     diff={"before": "".join(f"{n} {now[n]}\n" for n in changing),
                           "after": "".join(f"{n} {wanted}\n" for n in changing)})


if __name__ == "__main__":
    main()
