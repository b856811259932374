"""Gang scheduling: YuniKorn task groups, Volcano PodGroups, and a built-in all-or-nothing start."""
