"""Recall: the recall API, ranking exact against brute force, passages following every write."""
