// bundling comes later
