# The two set-up commands from the README, plus the pieces of the test run.
.PHONY: run test

# Run the local agent on its embedded simulator (engine on 127.0.0.1:8799, hub on :8790).
run:
	cargo run -p local-agent

# Install what the tests need (idempotently), start the local services, run every check.
test:
	bash .ci/test
