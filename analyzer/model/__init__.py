"""What renderers are given: findings and outcomes, the verdict, report data and chart data."""
