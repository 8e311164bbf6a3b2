"""Comparing two results: `comparison` (pairing rows, each side's aggregates, McNemar's test;
pure functions) and `render` (a comparison as JSON and as text)."""
