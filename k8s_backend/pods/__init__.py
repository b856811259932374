"""The executor pod builder: one feature step per concern, pod templates, name rules."""
