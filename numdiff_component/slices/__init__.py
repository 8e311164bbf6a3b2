"""Slices of a scored table (SPEC §3.1, §3.2): aggregates per group of a column's values, their
MLflow metric keys, and a threshold per row."""
