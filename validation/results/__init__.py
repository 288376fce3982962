"""What a validation run writes and what reads it: the node's results document (node.py), the
progress file a running suite keeps current (progress.py), and what each check proves, for the
reports (catalog.py). The checks' plugin writes them; the reports, `rocm-fleet progress` and the
fleet tools read them."""
