"""scalerl.rl"""
