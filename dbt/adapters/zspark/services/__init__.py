"""What the adapter's methods do, over one context: builds, increments, re-clustering."""
