"""Environment profiles hold exactly what the inventory declares (smoke).

Expected variables come from the env_profiles_* variables the role renders (the `spec`
fixture); the files are read back as the shell would read them (shlex), so quoting does not
count as drift but every changed, missing or extra variable does.
"""

from __future__ import annotations

import shlex
from typing import Any

import pytest

from validation.checks.tuning_codes import check, differences

pytestmark = pytest.mark.smoke

LOGIN_FILE = "/etc/profile.d/rocm-fleet.sh"
PROFILE_DIR = "/etc/rocm-fleet/profiles"
DEBUG_NAMES = ("HSA_ENABLE_SDMA", "HSA_ENABLE_INTERRUPT", "HSA_SVM_GUARD_PAGES", "HSA_DISABLE_CACHE",
               "HSAKMT_DEBUG_LEVEL")


def _present(spec: dict) -> None:
    if spec["env_profiles_state"] == "absent":
        pytest.skip("spec removes env_profiles (env_profiles_state: absent)")


def exports(text: str) -> dict[str, str]:
    """NAME -> value of every `export NAME=value` line (PATH handling is checked separately)."""
    out = {}
    for line in text.splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            name, _, value = words[1].partition("=")
            out[name] = value
    return out


def wanted_login_env(spec: dict) -> dict[str, str]:
    env = {**(spec["env_profiles_env"] or {}), **(spec["env_profiles_env_extra"] or {})}
    if spec["env_profiles_rocr_visible_devices"]:
        env["ROCR_VISIBLE_DEVICES"] = spec["env_profiles_rocr_visible_devices"]
    if spec["env_profiles_hip_visible_devices"]:
        env["HIP_VISIBLE_DEVICES"] = spec["env_profiles_hip_visible_devices"]
    return {k: str(v) for k, v in env.items()}


def _owned_0644(host: Any, path: str) -> None:
    f = host.file(path)
    check(f.exists, "RF-ENV-PROFILE", f"expected {path}, found no file")
    check((f.user, f.group, f.mode) == ("root", "root", 0o644), "RF-ENV-PROFILE",
          f"{path}: expected root:root 0644, found {f.user}:{f.group} {f.mode:04o}")


def test_login_environment_has_the_declared_variables(host: Any, spec: dict) -> None:
    """The login environment profile sets exactly the declared variables."""
    _present(spec)
    _owned_0644(host, LOGIN_FILE)
    drift = differences(wanted_login_env(spec), exports(host.file(LOGIN_FILE).content_string))
    check(not drift, "RF-ENV-PROFILE", f"{LOGIN_FILE}: " + "; ".join(drift))


def test_login_environment_puts_rocm_on_path(host: Any, spec: dict) -> None:
    """The login environment puts ROCm's bin directory on PATH."""
    _present(spec)
    mode = spec["env_profiles_rocm_path"]
    bin_dir = f"{spec['env_profiles_rocm_prefix']}/bin"
    if mode == "never" or (mode == "auto" and not host.file(bin_dir).is_directory):
        pytest.skip(f"spec does not put {bin_dir} on PATH here (env_profiles_rocm_path: {mode})")
    text = host.file(LOGIN_FILE).content_string
    check(f"PATH={shlex.quote(bin_dir)}:${{PATH}}" in text, "RF-ENV-PROFILE",
          f"{LOGIN_FILE}: expected {bin_dir} prepended to PATH, found no PATH line")


def test_opt_in_profiles_have_the_declared_variables(host: Any, spec: dict) -> None:
    """Each opt-in environment profile sets exactly its declared variables."""
    _present(spec)
    profiles = spec["env_profiles_profiles"] or {}
    directory = host.file(PROFILE_DIR)
    found_names = sorted(n[:-3] for n in directory.listdir() if n.endswith(".sh")) if directory.exists else []
    drift = [f"{name}: not declared, found {PROFILE_DIR}/{name}.sh" for name in found_names if name not in profiles]
    for name, mapping in sorted(profiles.items()):
        path = f"{PROFILE_DIR}/{name}.sh"
        if not host.file(path).exists:
            drift.append(f"{name}: expected {path}, found no file")
            continue
        drift += [f"{name}: {d}" for d in differences({k: str(v) for k, v in mapping.items()},
                                                      exports(host.file(path).content_string))]
    check(not drift, "RF-ENV-PROFILE", "; ".join(drift))


def test_opt_in_profiles_are_root_owned_and_read_only(host: Any, spec: dict) -> None:
    """The opt-in environment profiles are owned by root and not writable by others."""
    _present(spec)
    profiles = spec["env_profiles_profiles"] or {}
    if not profiles:
        pytest.skip("spec declares no opt-in profile")
    for name in sorted(profiles):
        _owned_0644(host, f"{PROFILE_DIR}/{name}.sh")


def test_no_debug_only_variables_reach_the_profiles(host: Any, spec: dict) -> None:
    """No debug-only ROCm variable reaches a profile unless debugging is allowed."""
    _present(spec)
    if spec["env_profiles_allow_debug"]:
        pytest.skip("spec allows debug-only variables (env_profiles_allow_debug: true)")
    paths = [LOGIN_FILE, *(f"{PROFILE_DIR}/{n}.sh" for n in sorted(spec["env_profiles_profiles"] or {}))]
    found = [f"{p}: {name}={value}" for p in paths if host.file(p).exists
             for name, value in exports(host.file(p).content_string).items() if name in DEBUG_NAMES]
    check(not found, "RF-ENV-DEBUG", "expected no debug-only variable, found " + "; ".join(found))
