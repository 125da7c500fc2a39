//! The manager: reconciles ClusterBindings into syncers and proxiers.
