package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hangar-mcp/hangar/plugintest"
)

// openMeteo is a local stand-in for Open-Meteo's forecast API.
func openMeteo(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.URL.Path != "/v1/forecast" || q.Get("current") != "temperature_2m,wind_speed_10m" {
			http.Error(w, `{"error":true,"reason":"unexpected request"}`, http.StatusBadRequest)
			return
		}
		if q.Get("latitude") == "100" {
			http.Error(w, `{"error":true,"reason":"Latitude must be in range of -90 to 90°. Given: 100.0."}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"latitude":%s,"longitude":%s,"current_units":{"time":"iso8601","temperature_2m":"°C","wind_speed_10m":"km/h"},
			"current":{"time":"2026-12-04T18:45","interval":900,"temperature_2m":3.1,"wind_speed_10m":11.2}}`, q.Get("latitude"), q.Get("longitude"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestCurrentWeather calls the tool under Hangar, with the grant of the
// local server's address: Hangar refuses loopback addresses to every
// grant that does not name them.
func TestCurrentWeather(t *testing.T) {
	api := openMeteo(t)
	p := plugintest.New(t, ".", &plugintest.Options{
		Config: map[string]string{"api_url": api.URL},
		Grants: plugintest.Grants{AllowedHosts: []string{"127.0.0.1"}},
	})

	var got weather
	p.Call("current_weather", place{Latitude: 52.52, Longitude: 13.41}).Decode(&got)
	want := weather{Temperature: 3.1, TemperatureUnit: "°C", WindSpeed: 11.2, WindSpeedUnit: "km/h", Time: "2026-12-04T18:45"}
	if got != want {
		t.Errorf("current_weather = %+v, want %+v", got, want)
	}

	res := p.Call("current_weather", place{Latitude: 100})
	if !res.IsError || res.Text != "open-meteo answered 400: Latitude must be in range of -90 to 90°. Given: 100.0." {
		t.Errorf("current_weather at latitude 100: isError %v, %q", res.IsError, res.Text)
	}
}

// TestCurrentWeatherDenied: without the grant, the request is refused, and
// the tool's error names the grant to add.
func TestCurrentWeatherDenied(t *testing.T) {
	api := openMeteo(t)
	for _, hosts := range [][]string{nil, {"api.open-meteo.com"}, {"*"}} {
		p := plugintest.New(t, ".", &plugintest.Options{
			Config: map[string]string{"api_url": api.URL},
			Grants: plugintest.Grants{AllowedHosts: hosts},
		})
		res := p.Call("current_weather", place{Latitude: 52.52, Longitude: 13.41})
		if want := `to allow it, add "127.0.0.1" to grants.allowed_hosts of plugin weather`; !res.IsError || !strings.Contains(res.Text, want) {
			t.Errorf("allowed_hosts %q: isError %v, %q; want an error with %q", hosts, res.IsError, res.Text, want)
		}
	}
}

// TestShape runs on the host, without Hangar: the plugin is ordinary Go
// code, and its parts test as such.
func TestShape(t *testing.T) {
	if _, err := shape(502, []byte("<html>Bad Gateway</html>")); err == nil || !strings.Contains(err.Error(), "open-meteo answered 502 with what is not JSON") {
		t.Errorf("shape of an HTML error page: %v", err)
	}
	got, err := shape(200, []byte(`{"current_units":{"temperature_2m":"°F","wind_speed_10m":"mp/h"},"current":{"time":"t","temperature_2m":40,"wind_speed_10m":3}}`))
	if want := (weather{40, "°F", 3, "mp/h", "t"}); err != nil || got != want {
		t.Errorf("shape = %+v, %v; want %+v", got, err, want)
	}
}
