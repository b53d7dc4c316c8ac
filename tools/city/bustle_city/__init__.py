"""bustle-city: one city on several district servers behind a gateway, run
and kept running on this machine (docs/districts.md, "One command")."""
