"""Made-up families, each one module as a contributor would write it: the test copies the project, drops a module
into sweep/target/families/ and lists it in the registry, and plans with nothing else changed."""
