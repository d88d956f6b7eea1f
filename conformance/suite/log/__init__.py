"""LOG: the partition log as clients see it through Produce, Fetch and ListOffsets."""
