package tracing

import (
	"fmt"
	"strconv"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Enabled says whether the OTEL_* variables (read by getenv) turn
// tracing on, and why not when they do not: OTEL_SDK_DISABLED=true turns
// it off; else OTEL_TRACES_EXPORTER decides when set ("otlp" on, "none"
// off, anything else an error); else an OTLP endpoint variable
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
// turns it on. Nothing set: off.
func Enabled(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch ex := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))); ex {
	case "otlp":
		return true, protocol(getenv)
	case "none":
		return false, nil
	case "":
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: ax exports traces over OTLP only (otlp or none)", ex)
	}
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return false, nil
	}
	return true, protocol(getenv)
}

// protocol refuses an OTLP protocol other than http/protobuf.
func protocol(getenv func(string) string) error {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := strings.TrimSpace(getenv(k)); p != "" {
			if p != "http/protobuf" {
				return fmt.Errorf("%s=%s: ax exports traces over OTLP/HTTP (http/protobuf) only", k, p)
			}
			return nil
		}
	}
	return nil
}

// sampler is the root sampler OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG name (default parentbased_always_on). An
// instance's trace has no parent (a caller's trace is a link), so the
// parentbased_ samplers decide as their root sampler does.
func sampler(getenv func(string) string) (sdktrace.Sampler, error) {
	name := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG"))
	ratio := func() (sdktrace.Sampler, error) {
		if arg == "" {
			return sdktrace.TraceIDRatioBased(1), nil
		}
		v, err := strconv.ParseFloat(arg, 64)
		if err != nil || v < 0 || v > 1 {
			return nil, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%s: want a ratio from 0 to 1", arg)
		}
		return sdktrace.TraceIDRatioBased(v), nil
	}
	switch strings.TrimPrefix(name, "parentbased_") {
	case "", "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "traceidratio":
		return ratio()
	}
	return nil, fmt.Errorf("OTEL_TRACES_SAMPLER=%s: want always_on, always_off, traceidratio or their parentbased_ forms", name)
}
