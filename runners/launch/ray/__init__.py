"""Ray Jobs: `backend` (Ray's Job Submission API on a running cluster, and how a GPU job waits
there for the upstream judge), `sdk` (the Ray SDK, imported only when used, and the dashboard's
HTTP answers)."""
