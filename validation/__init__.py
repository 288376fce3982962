"""rocm-fleet: provisioning and validation for AMD Instinct GPU fleets.

The package is the library; the `rocm-fleet` CLI and the pytest checks are its consumers.
Data flows one way: probe (measure) -> parser (typed record) -> judge (verdict) -> report.
"""

__version__ = "0.1.0"
