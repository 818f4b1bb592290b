// An independent client of the Sessions contract (docs/protocol.md, "Sessions"), written against the
// specification only and with Go's standard library only: mutual TLS with the node's key and certificate,
// the gateway's serving CA as the only root, HTTP/2 negotiated by ALPN, the Hello, then the event stream
// read until it has seen the welcome and the asked number of heartbeats (or the stream ends, or time runs
// out). It prints what it saw as one JSON object on stdout; it verifies nothing itself, so that the test
// that runs it checks every byte.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

type event struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
	// The data line exactly as it came, for a byte-for-byte check of the signed envelope.
	Raw string `json:"raw"`
	// Milliseconds since the Hello was sent.
	AtMs int64 `json:"atMs"`
}

type result struct {
	Proto       string `json:"proto"`
	Status      int    `json:"status"`
	ContentType string `json:"contentType"`
	// The Hello's bytes as sent.
	Hello string `json:"hello"`
	// A non-200 answer's body, base64 (a refusal must be exactly the uniform bytes).
	BodyB64 string  `json:"bodyB64,omitempty"`
	Events  []event `json:"events"`
	// Why reading stopped: "heartbeats" (saw enough), "eof", "timeout" or an error's text.
	Ended string `json:"ended"`
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "go-session-client: "+format+"\n", args...)
	os.Exit(2)
}

func main() {
	gateway := flag.String("gateway", "", "the gateway's URL, https://host:port")
	basePath := flag.String("base-path", "/api/compute", "the API's base path")
	certFile := flag.String("cert", "", "PEM of the node's certificate (the leaf)")
	keyFile := flag.String("key", "", "PEM of the node's private key")
	caFile := flag.String("ca", "", "PEM of the gateway's serving CA")
	serverName := flag.String("server-name", "", "the name the gateway's certificate must carry (default: the URL's host)")
	nodeID := flag.String("node-id", "", "the Hello's nodeId")
	agentVersion := flag.String("agent-version", "0.1.0", "the Hello's agentVersion")
	heartbeats := flag.Int("heartbeats", 2, "stop after this many heartbeat events")
	timeout := flag.Duration("timeout", 20*time.Second, "give up reading after this long")
	flag.Parse()
	if *gateway == "" || *certFile == "" || *keyFile == "" || *caFile == "" || *nodeID == "" {
		fail("-gateway, -cert, -key, -ca and -node-id are required")
	}

	pair, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		fail("the node's key and certificate: %v", err)
	}
	caPem, err := os.ReadFile(*caFile)
	if err != nil {
		fail("the serving CA: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPem) {
		fail("no certificate in %s", *caFile)
	}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: roots, ServerName: *serverName, MinVersion: tls.VersionTLS12}
	// A custom TLS configuration turns HTTP/2 off unless asked for: ForceAttemptHTTP2 offers "h2" by ALPN.
	transport := &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true}
	client := &http.Client{Transport: transport}

	// The Hello exactly as protocol.md shows it: {"nodeId":…,"agentVersion":…}, application/json.
	hello, _ := json.Marshal(struct {
		NodeID       string `json:"nodeId"`
		AgentVersion string `json:"agentVersion"`
	}{*nodeID, *agentVersion})
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	request, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(*gateway, "/")+*basePath+"/v1/session", bytes.NewReader(hello))
	if err != nil {
		fail("the request: %v", err)
	}
	request.Header.Set("Content-Type", "application/json")
	started := time.Now()
	response, err := client.Do(request)
	if err != nil {
		fail("the Hello: %v", err)
	}
	defer response.Body.Close()

	out := result{Proto: response.Proto, Status: response.StatusCode, ContentType: response.Header.Get("Content-Type"), Hello: string(hello), Events: []event{}}
	if response.StatusCode != http.StatusOK {
		body, err := io.ReadAll(response.Body)
		if err != nil {
			out.Ended = err.Error()
		} else {
			out.Ended = "eof"
		}
		out.BodyB64 = base64.StdEncoding.EncodeToString(body)
		emit(out)
		return
	}

	// Server-Sent Events: "event:" and one "data:" line each, a blank line ending the event.
	reader := bufio.NewReader(response.Body)
	seen := 0
	var current event
	for {
		line, err := reader.ReadString('\n')
		if err != nil {
			if ctx.Err() != nil {
				out.Ended = "timeout"
			} else if err == io.EOF {
				out.Ended = "eof"
			} else {
				out.Ended = err.Error()
			}
			break
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if current.Type == "" && current.Raw == "" {
				continue
			}
			if current.Type == "" {
				current.Type = "message"
			}
			current.AtMs = time.Since(started).Milliseconds()
			if json.Valid([]byte(current.Raw)) {
				current.Data = json.RawMessage(current.Raw)
			}
			out.Events = append(out.Events, current)
			if current.Type == "heartbeat" {
				seen++
			}
			current = event{}
		case strings.HasPrefix(line, "event:"):
			current.Type = strings.TrimPrefix(strings.TrimPrefix(line, "event:"), " ")
		case strings.HasPrefix(line, "data:"):
			current.Raw = strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
		}
		if seen >= *heartbeats {
			out.Ended = "heartbeats"
			break
		}
	}
	emit(out)
}

func emit(out result) {
	encoded, err := json.Marshal(out)
	if err != nil {
		fail("the output: %v", err)
	}
	os.Stdout.Write(append(encoded, '\n'))
}
