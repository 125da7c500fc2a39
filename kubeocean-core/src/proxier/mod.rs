//! The kubelet API of virtual nodes, served for one ClusterBinding.
