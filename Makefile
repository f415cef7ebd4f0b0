# The two set-up commands from the README.
.PHONY: run test

# Run the local agent on its embedded simulator (engine on http://127.0.0.1:8799).
run:
	cargo run -p local-agent

# Install what the tests need (idempotently), start the local services, run every check.
test:
	bash .ci/test
