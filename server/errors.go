package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// apiError is an error answered to the client with an HTTP status and an
// OpenAI-style body: {"error":{"message","type","param","code"}}.
type apiError struct {
	status  int
	typ     string // "invalid_request_error", "authentication_error", ...
	param   string // the request field at fault; "" is sent as null
	message string
	err     error // wrapped cause, if any
}

func (e *apiError) Error() string {
	if e.param != "" {
		return fmt.Sprintf("%d %s (%s): %s", e.status, e.typ, e.param, e.message)
	}
	return fmt.Sprintf("%d %s: %s", e.status, e.typ, e.message)
}

func (e *apiError) Unwrap() error { return e.err }

// invalid is a 400 invalid_request_error naming param.
func invalid(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: param, message: fmt.Sprintf(format, args...)}
}

// errorBody is the JSON body of an error response.
type errorBody struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) body() errorBody {
	b := errorBody{Error: errorObject{Message: e.message, Type: e.typ}}
	if e.param != "" {
		p := e.param
		b.Error.Param = &p
	}
	return b
}

// writeError answers err as JSON. Errors that are not *apiError become 500s.
func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{status: http.StatusInternalServerError, typ: "server_error", message: err.Error(), err: err}
	}
	if ae.status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	if ae.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="kvq"`)
	}
	writeJSON(w, ae.status, ae.body())
}

// writeJSON answers v as a JSON body with the given status and returns the error of
// writing it (the client's, usually).
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":{"message":"encoding the response failed","type":"server_error","param":null,"code":null}}`, http.StatusInternalServerError)
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(append(b, '\n'))
	return err
}

// decodeError turns a JSON decoding error into a 400 (or 413 for an oversized body)
// that names the field at fault when there is one.
func decodeError(err error) *apiError {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
		big *http.MaxBytesError
	)
	switch {
	case errors.As(err, &big):
		return &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error",
			message: fmt.Sprintf("request body is larger than the limit of %d bytes", big.Limit), err: err}
	case errors.As(err, &syn):
		return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error",
			message: fmt.Sprintf("malformed JSON body at byte %d: %v", syn.Offset, err), err: err}
	case errors.As(err, &typ):
		field := strings.TrimPrefix(typ.Field, "commonRequest.")
		if field == "" {
			return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error",
				message: fmt.Sprintf("the request body must be a JSON object, not %s", typ.Value), err: err}
		}
		return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: field,
			message: fmt.Sprintf("field %q must be %s, not %s", field, jsonTypeName(typ.Type.String()), typ.Value), err: err}
	}
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error",
		message: fmt.Sprintf("malformed JSON body: %v", err), err: err}
}

// jsonTypeName names a Go type the way a JSON client thinks of it.
func jsonTypeName(goType string) string {
	t := strings.TrimLeft(goType, "*")
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "bool":
		return "a boolean"
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	}
	return "an object"
}
