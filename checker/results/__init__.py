"""The result types every engine fills and every exporter reads: traces, statistics, verdicts, findings."""
