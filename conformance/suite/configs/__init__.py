"""Topic configuration: DescribeConfigs, AlterConfigs, IncrementalAlterConfigs (CONFIGS.Rn)."""
