"""scalerl.generate"""
