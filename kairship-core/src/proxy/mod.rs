//! The native Kubernetes proxy into instances.
