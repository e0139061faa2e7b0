package api_test

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/ax-scheduler/ax/api"
)

func TestServer_Alerts(t *testing.T) {
	tests := []struct {
		name       string
		req        request
		wantStatus int
		wantCalls  []call
	}{
		{"list", getReq("/v1/alerts"), 200, []call{{Method: "ListAlerts", Name: "|||"}}},
		{"list filtered", getReq("/v1/alerts?state=firing&task=daily&rule=instance_failed&limit=5&cursor=12"), 200,
			[]call{{Method: "ListAlerts", Name: "firing|daily|instance_failed|12", N: 5}}},
		{"bad state", getReq("/v1/alerts?state=open"), 400, nil},
		{"bad cursor", getReq("/v1/alerts?cursor=x"), 400, nil},
		{"bad task", getReq("/v1/alerts?task=a%20b"), 400, nil},
		{"silence", request{method: "POST", path: "/v1/silences", body: `{"task":"daily","for":"2h","comment":"deploy"}`}, 201,
			[]call{{Method: "PutSilence", Name: "daily"}}},
		{"silence until", request{method: "POST", path: "/v1/silences", body: `{"rule":"misfire","until":"2030-01-01T00:00:00Z"}`}, 201,
			[]call{{Method: "PutSilence"}}},
		{"silence nothing", request{method: "POST", path: "/v1/silences", body: `{"for":"2h"}`}, 400, nil},
		{"silence no duration", request{method: "POST", path: "/v1/silences", body: `{"task":"daily"}`}, 400, nil},
		{"silence both", request{method: "POST", path: "/v1/silences", body: `{"task":"daily","for":"1h","until":"2030-01-01T00:00:00Z"}`}, 400, nil},
		{"silence unknown field", request{method: "POST", path: "/v1/silences", body: `{"task":"daily","for":"1h","x":1}`}, 400, nil},
		{"silences", getReq("/v1/silences"), 200, []call{{Method: "ListSilences"}}},
		{"unsilence", request{method: "DELETE", path: "/v1/silences/s1"}, 204, []call{{Method: "DeleteSilence", Name: "s1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{}
			rec := serve(t, api.Config{}, fb, tt.req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status: got %d, want %d (body %s)", rec.Code, tt.wantStatus, rec.Body)
			}
			got := fb.Calls()
			for i := range got {
				got[i].Caller = api.Caller{}
			}
			if !reflect.DeepEqual(got, tt.wantCalls) {
				t.Errorf("backend calls:\ngot  %+v\nwant %+v", got, tt.wantCalls)
			}
		})
	}
	_ = http.MethodGet
}
