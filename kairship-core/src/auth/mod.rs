//! Authentication and authorization of API callers.
