"""AWS components: network, kms, cluster, gpu_node_pool, storage, fabric."""
