"""Managing running applications: ``status``, ``kill``, ``list``, ``logs``, ``events`` and ``gc``."""
