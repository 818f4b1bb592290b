module bettercompute.test/go-session-client

go 1.19
