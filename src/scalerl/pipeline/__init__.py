"""scalerl.pipeline"""
