"""Ray Jobs: the backend on a running cluster (`backend`) and the Ray SDK from here (`sdk`)."""
