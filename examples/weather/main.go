// Command weather is a Hangar plugin that calls an HTTP API and shapes its
// answer: its tool current_weather asks Open-Meteo (https://open-meteo.com)
// for the weather at a place and answers the few values a model needs.
//
// It needs the grant of the API's host, in hangar.yaml:
//
//	grants:
//	  allowed_hosts: [api.open-meteo.com]
//
// The config value api_url replaces the API's address (its tests point it
// at a local server).
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o weather.wasm .
package main

import (
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/hangar-mcp/hangar/pdk"
	"github.com/hangar-mcp/hangar/pdk/typed"
)

// defaultAPI is Open-Meteo's address, unless the config value api_url
// replaces it.
const defaultAPI = "https://api.open-meteo.com"

type place struct {
	Latitude  float64 `json:"latitude" jsonschema:"the latitude, -90 to 90"`
	Longitude float64 `json:"longitude" jsonschema:"the longitude, -180 to 180"`
}

type weather struct {
	Temperature     float64 `json:"temperature"`
	TemperatureUnit string  `json:"temperature_unit"`
	WindSpeed       float64 `json:"wind_speed"`
	WindSpeedUnit   string  `json:"wind_speed_unit"`
	Time            string  `json:"time" jsonschema:"the local time of the observation"`
}

func init() {
	typed.AddTool(&pdk.Tool{
		Name:        "current_weather",
		Description: "The current temperature and wind speed at a place, from Open-Meteo.",
		Annotations: &pdk.ToolAnnotations{ReadOnlyHint: true},
	}, currentWeather)
}

func currentWeather(ctx *pdk.Context, in place) (weather, error) {
	api, ok := pdk.Config("api_url")
	if !ok {
		api = defaultAPI
	}
	q := url.Values{}
	q.Set("latitude", fmt.Sprint(in.Latitude))
	q.Set("longitude", fmt.Sprint(in.Longitude))
	q.Set("current", "temperature_2m,wind_speed_10m")
	resp, err := pdk.Fetch(&pdk.HTTPRequest{
		URL:    api + "/v1/forecast?" + q.Encode(),
		Header: map[string]string{"Accept": "application/json"},
	})
	if err != nil {
		return weather{}, err // a refused host names the grant to add
	}
	return shape(resp.StatusCode, resp.Body)
}

// forecast is the part of Open-Meteo's answer the tool uses.
type forecast struct {
	Reason string `json:"reason"` // why a request failed
	Units  struct {
		Temperature string `json:"temperature_2m"`
		WindSpeed   string `json:"wind_speed_10m"`
	} `json:"current_units"`
	Current struct {
		Time        string  `json:"time"`
		Temperature float64 `json:"temperature_2m"`
		WindSpeed   float64 `json:"wind_speed_10m"`
	} `json:"current"`
}

// shape turns Open-Meteo's answer, of the given status, into the tool's.
func shape(status int, body []byte) (weather, error) {
	var f forecast
	if err := json.Unmarshal(body, &f); err != nil {
		return weather{}, fmt.Errorf("open-meteo answered %d with what is not JSON: %w", status, err)
	}
	if status != 200 {
		return weather{}, fmt.Errorf("open-meteo answered %d: %s", status, f.Reason)
	}
	return weather{
		Temperature:     f.Current.Temperature,
		TemperatureUnit: f.Units.Temperature,
		WindSpeed:       f.Current.WindSpeed,
		WindSpeedUnit:   f.Units.WindSpeed,
		Time:            f.Current.Time,
	}, nil
}

// main is required by the toolchain but never called: Hangar runs the init
// functions when it starts the plugin, then calls its exports.
func main() {}
