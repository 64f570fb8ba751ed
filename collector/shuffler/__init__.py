"""The shuffler role: devices of shuffled campaigns send to it; it forwards their reports in shuffled batches."""
