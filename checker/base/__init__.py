"""What every stage uses: spans and input errors, the language's limits, safe text, progress lines."""
