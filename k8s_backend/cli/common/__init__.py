"""What every subcommand shares: the console, one-line errors, the injectable dependencies, the cluster
connection and its options, spark-submit-style properties, and following a driver's log and status."""
