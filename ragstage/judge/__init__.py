"""Silver labels from a model judge (see relevance)."""
