"""Side-by-side benchmarks (see README.md)."""
