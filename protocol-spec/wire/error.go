package wire

import (
	"errors"
	"fmt"
)

// Error is a Kafka protocol error code. The generated values (ErrNotLeaderOrFollower, ...) are
// the only instances for known codes, so errors.Is works on them through any wrapping, and
// errors.As gives the code, name and retriability.
type Error struct {
	Code        int16
	Name        string
	Retriable   bool
	Description string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Name, e.Description) }

// Is matches another *Error with the same code, so that an error built for an unknown code
// also compares equal to another one of the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// ErrorForCode returns the error for a wire error code: nil for 0, the generated value for a
// known code, and a new *Error for a code this table does not know.
func ErrorForCode(code int16) error {
	if code == 0 {
		return nil
	}
	if e, ok := errorsByCode[code]; ok {
		return e
	}
	return &Error{Code: code, Name: fmt.Sprintf("UNKNOWN_ERROR_CODE_%d", code), Description: "an error code this client does not know"}
}

// CodeOf returns the wire code of err: 0 for nil, the code of a wrapped *Error, and -1
// (UNKNOWN_SERVER_ERROR) for anything else.
func CodeOf(err error) int16 {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return -1
}

// IsRetriable reports whether err wraps a retriable protocol error.
func IsRetriable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retriable
}
