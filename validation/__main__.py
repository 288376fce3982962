"""`python -m validation` runs the rocm-fleet CLI (for nodes without the console script on PATH)."""

from validation.cli import console_main

console_main()
