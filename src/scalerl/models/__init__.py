"""scalerl.models"""
