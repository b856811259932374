"""The ``k8s-backend`` command: ``submit`` (spark-submit's arguments), the app commands (``status``, ``kill``,
``list``, ``logs``, ``events``, ``gc``) and ``local``; nothing else in the package imports it."""
