"""What a promotion asks for: the full run's settings (PromotionConfig, from flags or a promotion YAML) and the
request of `sweep promote plan | submit | rehearse` built from them."""
