-- wrk script: POST one UCP checkout creation per request (each creates a Stripe Checkout Session).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"line_items":[{"item":{"id":"pro_monthly"},"quantity":1}]}'
