"""A server reached by SQL alone: the clustered build and the index as statements."""
